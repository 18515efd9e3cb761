//go:build !unix

package gateway

// setSendBuffer does nothing where the socket option is not reachable the
// same way: the system's buffer stays.
func setSendBuffer(fd uintptr, n int) error { return nil }
