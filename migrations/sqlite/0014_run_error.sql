-- Why a run stopped on an error after it was stored (its process ended with it, password
-- redacted): NULL for any other ending, and for runs stored before it was recorded.
ALTER TABLE runs ADD COLUMN error TEXT;
