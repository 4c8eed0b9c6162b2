//! Curator-style re-entrant lock (InterProcessMutex, seeds 002 and 004), `original` and `fixed`.
