package rabbitmq

// RunDone is closed when the broker's run goroutine has returned: all
// that is left of Close then is waiting for the Gone calls.
func (b *Broker) RunDone() <-chan struct{} { return b.done }
