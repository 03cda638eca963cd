-- What each stage ran on and with, once defaults and `auto` were resolved (`device`, `gpu`,
-- `precision`, `rnn_engine`, ...), as a JSON object of name -> text; NULL when it recorded
-- none (and for stages stored before facts were recorded). One column, not a table of rows:
-- a stage has a few bounded facts, always written and read with its stage result, like its
-- notes.
ALTER TABLE stage_results ADD COLUMN facts TEXT;
