// Package accept keeps a server accepting connections through errors that
// pass, such as running out of file descriptors. An accept loop that
// returns on such an error stops serving for good while its port stays
// open; a Listener instead retries them with a growing pause (5 ms
// doubling to 1 s, as net/http does), logs each burst of failures once and
// counts every failure, and returns only the errors that do not pass,
// such as its own Close.
//
// It imports nothing of the project.
package accept
