-- Ready lanes: nothing to do here. PostgreSQL had ready lanes from the start
-- (lanes.ready and the lanes_ready index are in 001_init); this migration is
-- SQLite's move to them. It exists so that version N means the same change
-- on both engines.
SELECT 1;
