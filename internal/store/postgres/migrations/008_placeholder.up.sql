-- Placeholder for version 8, which the queue-options branch (options) brings
-- as 008_queue_options.up.sql. The migration runner refuses a gap in the
-- numbering, so this branch carries a no-op under the number until the
-- branches are merged; the merge replaces this file with the real one.
SELECT 1;
