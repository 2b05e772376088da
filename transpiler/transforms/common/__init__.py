"""What the source transforms share: classifying ANF statements, SSA renaming, statement
analysis, closures, partials and callables as plain functions, tracing what has no source."""
