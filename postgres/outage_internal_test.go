package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestUnreachable: connection failures are told from a statement's own
// failures by type and code, never by text.
func TestUnreachable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting", fmt.Errorf("begin: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"bad input", &pgconn.PgError{Code: "22P02"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"connect error", fmt.Errorf("acquire: %w", &pgconn.ConnectError{}), true},
		{"refused dial", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"reset", fmt.Errorf("commit: %w", syscall.ECONNRESET), true},
		{"deadline", fmt.Errorf("commit: %w", context.DeadlineExceeded), true},
		{"eof mid-answer", fmt.Errorf("lock rooms: %w", io.ErrUnexpectedEOF), true},
		{"text alone", errors.New("dial tcp: connection refused"), false},
		{"a bug", errors.New("send batch: a result row is missing"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreachable(tc.err); got != tc.want {
				t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
