-- What a run is about, fixed when it starts (configs, resolved parameters, compare settings,
-- parsed guards and claims), as versioned JSON: reports read it instead of validating the
-- stored manifest again with whatever binary is at hand. NULL for runs stored before.
ALTER TABLE runs ADD COLUMN spec TEXT;
