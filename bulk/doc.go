// Package bulk moves a whole Parley server's data, or one room's, in and
// out of a store as a parley-export file: a versioned JSON Lines format
// (docs/export-format.md) whose records are the root package's own shapes
// (the user, room, member, ban and message of the REST API and of GET
// /api/me/export), with the fields a copy needs beside them.
//
// Export streams a Source (a consistent snapshot of one store) to a
// writer, a page or a cursor at a time, so its memory does not grow with
// the data. Import checks a whole file first (Check), then writes it into
// a Sink in batches, each in one transaction of the store, idempotently:
// a record already there is skipped, so a file imported twice changes
// nothing the second time and an import cut short finishes when run again.
// The stores (sqlite, postgres) implement Source and Sink; cmd/parley
// wires them.
package bulk
