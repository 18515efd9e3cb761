package main

import (
	"flag"
	"fmt"

	"parley"
	"parley/chat"
	"parley/postgres"
	"parley/sqlite"
)

// Both durable stores delete accounts: a method missing from one would
// otherwise turn DELETE /api/me off (503) without a word.
var (
	_ chat.Accounts = (*sqlite.Store)(nil)
	_ chat.Accounts = (*postgres.Store)(nil)
)

// accountFlags registers the flags of account deletion (DELETE /api/me).
func (c *Config) accountFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.DeletedNameHold, "deleted-name-hold", chat.DefaultNameHold,
		"how long a deleted account's name is refused to a new sign-up, then free again (0: the default)")
	fs.DurationVar(&c.DeleteSignInWindow, "delete-signin-window", chat.DefaultSignInWindow,
		"an account with no password (OpenID Connect, JWT) deletes itself with a token of a sign-in at most this old (0: the default)")
	fs.Func("deleted-account-messages", `what becomes of a deleted account's messages: "erase" (tombstones, the default) or "keep" (their text stays); either way they show as "`+chat.DeletedSenderName+`"`,
		func(v string) error {
			switch v {
			case "erase":
				c.KeepDeletedMessages = false
			case "keep":
				c.KeepDeletedMessages = true
			default:
				return fmt.Errorf("%q: want erase or keep", v)
			}
			return nil
		})
}

// accountsOf is what deletes accounts in db: both durable stores do
// (sqlite.Store, postgres.Store), below the read path, whose caches hear
// of the deletion through the events of the leaves and tombstones that
// chat.DeleteAccount writes first.
func accountsOf(db parley.Store) chat.Accounts {
	a, _ := db.(chat.Accounts)
	return a
}
