//! Leader election (seed 003 herd version and the fixed predecessor-watch election).
