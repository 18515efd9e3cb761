package sqlite

import "fmt"

// Sync is how hard a commit pushes its data to the disk before a write
// returns. The zero value is SyncFull. See the package doc for what each
// setting survives.
type Sync int

// Sync settings.
const (
	// SyncFull fsyncs the WAL after every commit, before any write of the
	// commit returns: a write that returned survives a process crash, an OS
	// crash and a power loss.
	SyncFull Sync = iota
	// SyncNormal writes the WAL at every commit but fsyncs only at
	// checkpoints (synchronous=NORMAL): a write that returned survives a
	// process crash; an OS crash or power loss may undo the last commits,
	// never corrupt the database.
	SyncNormal
	// SyncOff never fsyncs (synchronous=OFF): a write that returned
	// survives a process crash only; an OS crash or power loss may lose
	// commits and may corrupt the database file.
	SyncOff
)

// ParseSync parses a sync setting: "full" (or ""), "normal" or "off".
func ParseSync(s string) (Sync, error) {
	switch s {
	case "", "full":
		return SyncFull, nil
	case "normal":
		return SyncNormal, nil
	case "off":
		return SyncOff, nil
	}
	return 0, fmt.Errorf("sqlite: unknown sync setting %q (want full, normal or off)", s)
}

// String returns the setting as ParseSync reads it.
func (s Sync) String() string {
	switch s {
	case SyncFull:
		return "full"
	case SyncNormal:
		return "normal"
	case SyncOff:
		return "off"
	}
	return fmt.Sprintf("Sync(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s Sync) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (flag.TextVar, config
// files) with ParseSync.
func (s *Sync) UnmarshalText(b []byte) error {
	v, err := ParseSync(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// pragma is the value of PRAGMA synchronous for the setting. The writer
// of SyncFull runs NORMAL and fsyncs the WAL itself after each commit
// (Store.flush), off its own path; a checkpoint under NORMAL fsyncs the WAL
// first and the database after, as under FULL.
func (s Sync) pragma(writer bool) string {
	switch {
	case s == SyncOff:
		return "OFF"
	case s == SyncNormal || writer:
		return "NORMAL"
	}
	return "FULL"
}
