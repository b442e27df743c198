-- Placeholder for version 7, which the messages branch (cp-messages) brings
-- as 007_control_plane.up.sql. The migration runner refuses a gap in the
-- numbering, so this branch carries a no-op under the number until the
-- branches are merged; the merge replaces this file with the real one.
SELECT 1;
