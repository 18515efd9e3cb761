package subindex

// Index lists subscriptions by key; each list is unordered. A subscription
// knows its position in its list (the int that a pos function returns for
// it, -1 when it is not registered), so that removal needs no search: it
// swaps the last one of the list into its place. A list that becomes empty
// is deleted, so len of an Index is the number of keys with subscriptions.
//
// An Index is a map, read as one (x[key], range, len); Add and Remove are
// its only writes.
type Index[S comparable] map[string][]S

// Add appends s to key's list and sets its position.
func (x Index[S]) Add(key string, s S, pos func(S) *int) {
	*pos(s) = len(x[key])
	x[key] = append(x[key], s)
}

// Remove takes s out of key's list by swapping the last one into its
// place, and sets its position to -1. It reports false, and changes
// nothing, when s is not registered under key.
func (x Index[S]) Remove(key string, s S, pos func(S) *int) bool {
	list := x[key]
	at := *pos(s)
	if at < 0 || at >= len(list) || list[at] != s {
		return false
	}
	last := len(list) - 1
	list[at] = list[last]
	*pos(list[at]) = at
	var zero S
	list[last] = zero
	if last == 0 {
		delete(x, key)
	} else {
		x[key] = list[:last]
	}
	*pos(s) = -1
	return true
}
