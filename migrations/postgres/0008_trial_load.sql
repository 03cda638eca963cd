-- How busy the machine was around each trial: the 1-minute load average just before and just
-- after it, the cores' worth of CPU other processes used during it, the cores available to the
-- run, and the mean CPU clock (MHz) after it. NULL where a figure could not be read and for
-- trials stored before they were recorded.
ALTER TABLE trials ADD COLUMN load_before DOUBLE PRECISION;
ALTER TABLE trials ADD COLUMN load_after DOUBLE PRECISION;
ALTER TABLE trials ADD COLUMN cpu_other DOUBLE PRECISION;
ALTER TABLE trials ADD COLUMN cpu_cores BIGINT;
ALTER TABLE trials ADD COLUMN cpu_mhz DOUBLE PRECISION;
-- What a stage reported dropping or skipping, as a JSON array of sentences; NULL when it
-- reported nothing (and for stages stored before notes were recorded).
ALTER TABLE stage_results ADD COLUMN notes TEXT;
