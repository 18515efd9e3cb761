// Package chat is Parley's application service: the operations users ask
// for (register, log in, create and join rooms, send, read history, mark
// read), with their validation and authorization, shared by every transport
// (rest for JSON over HTTP, gateway for STOMP). It talks to a parley.Store
// and knows nothing of HTTP or STOMP.
package chat
