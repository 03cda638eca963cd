-- The CPU counters' changes over each trial, in clock ticks: busy ticks of the CPUs the run may
-- use, ticks of the run's own process and the children it waited for, all ticks of those CPUs,
-- and how many CPUs they cover. A run sums them over its trials, so that trials shorter than
-- the counters' resolution still add up to a window they resolve. NULL where the counters
-- could not be read and for trials stored before they were kept.
ALTER TABLE trials ADD COLUMN IF NOT EXISTS cpu_busy_ticks BIGINT;
ALTER TABLE trials ADD COLUMN IF NOT EXISTS cpu_own_ticks BIGINT;
ALTER TABLE trials ADD COLUMN IF NOT EXISTS cpu_total_ticks BIGINT;
ALTER TABLE trials ADD COLUMN IF NOT EXISTS cpu_tick_cpus BIGINT;
