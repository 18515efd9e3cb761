//go:build unix

package gateway

import "syscall"

// setSendBuffer sets the kernel send buffer of fd to n bytes.
func setSendBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n)
}
