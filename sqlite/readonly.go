package sqlite

import "database/sql"

// OpenReadOnly opens the database at path for reading only, as Backup and
// Inspect do: it never creates the file and cannot write to it. It is for
// tools that read a stopped node's database with their own SQL (parley
// port), which hold the data directory's lock (package dirlock) so that no
// server writes meanwhile, and have checked the file with Inspect. The
// *sql.DB has one connection; the caller closes it.
func OpenReadOnly(path string) *sql.DB { return openReadOnly(path) }
