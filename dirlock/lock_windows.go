package dirlock

import (
	"errors"
	"os"
	"syscall"
)

// openLocked opens or creates the file at path shared for reading only:
// while this handle is open, no other may write it, so a second
// openLocked fails with a sharing violation, and the system closes the
// handle when the process ends, however it ends. Others can still read
// the holder's pid.
func openLocked(path string) (*os.File, error) {
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ|syscall.GENERIC_WRITE, syscall.FILE_SHARE_READ,
		nil, syscall.OPEN_ALWAYS, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// errSharingViolation is ERROR_SHARING_VIOLATION.
const errSharingViolation syscall.Errno = 32

// isHeld reports whether openLocked failed because another holds the lock.
func isHeld(err error) bool {
	return errors.Is(err, errSharingViolation)
}
