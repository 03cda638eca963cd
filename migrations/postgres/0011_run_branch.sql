-- The branch checked out when the run started (`git symbolic-ref --short HEAD`): NULL for a
-- detached HEAD, a manifest outside a repository, and runs stored before it was recorded.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS git_branch TEXT;
