-- The version of the generator that wrote the synthetic market (`market::GENERATOR_VERSION`):
-- the same options generate other bars under another version, so a record with another
-- version does not describe the market the current version would generate. Rows written
-- before this column existed came from version 1.
ALTER TABLE synth_market ADD COLUMN IF NOT EXISTS generator INTEGER NOT NULL DEFAULT 1;
