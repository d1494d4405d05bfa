//! The store: every database of the host. Today the SQLite backend in `sqlite`.

pub mod sqlite;
