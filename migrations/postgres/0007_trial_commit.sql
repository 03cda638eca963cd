-- The commit whose code each trial ran: its variant's git revision (`git = ...`, `--rev`), else
-- the commit of the run's working tree. `git_dirty`: the code differed from that commit
-- (uncommitted changes, or tracked files a build changed). NULL for trials run outside a git
-- repository and for trials stored before it was recorded.
ALTER TABLE trials ADD COLUMN git_commit TEXT;
ALTER TABLE trials ADD COLUMN git_dirty BOOLEAN;
