-- The stock database a run read market data from (password redacted), so its report and
-- reproduce line can name it. NULL for runs stored before it was recorded.
ALTER TABLE runs ADD COLUMN stock_database TEXT;
