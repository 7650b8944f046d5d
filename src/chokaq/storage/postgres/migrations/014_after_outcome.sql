-- Callbacks on any outcome and results passed as arguments (docs/workflows.md). An edge with
-- any_outcome is satisfied when its parent finishes either way: its move to the archive, or to
-- the DLQ (failed, cancelled, expired, zombie, dependency failed), releases the child in the
-- same transaction; a plain edge (the default) still waits for the archive. arg_position is the
-- place of the parent's result among the child's leading positional arguments (pass_results),
-- NULL for a child that reads its parents through the context only. Both are written once, at
-- enqueue; a constant default adds the columns without rewriting the table.
ALTER TABLE {schema}.job_edges
    ADD COLUMN any_outcome boolean NOT NULL DEFAULT false,
    ADD COLUMN arg_position integer;
