// Package schema reads a store's embedded SQL migrations: one file per
// version, named NNNN_name.sql, in version order. Each store applies them
// with its own driver and locking; this package only names and orders them.
//
// It imports nothing of the project.
package schema
