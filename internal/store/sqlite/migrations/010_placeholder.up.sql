-- Placeholder for version 10, which the streams branch (streams) brings as
-- 010_streams.up.sql. The migration runner refuses a gap in the numbering,
-- so this branch carries a no-op under the number until the branches are
-- merged; the merge replaces this file with the real one.
SELECT 1;
