-- No change on this engine. The embedded engine re-keys its duplicate-check
-- index by transaction id first under this number, because SQLite writes
-- every page a commit touches whole into its WAL. PostgreSQL logs index
-- insertions as small records, and pushes measured the same with either
-- order, so rebuilding the index of a big messages table at start-up
-- (blocking pushes meanwhile) would buy nothing here.
SELECT 1;
