// Package rest serves Parley's JSON API over HTTP (design §3): accounts,
// rooms, membership, history and sending, people and moderation, with an optional per-user limit
// on sends (limited) and limits on sign-ups and failed logins per client
// address and name (login.go). It maps chat operations to routes and
// parley error codes to HTTP statuses, in one place (errorStatus).
package rest
