// Package client is a Go client of Narad's HTTP API (API.md): produce (single and batch),
// consume with leases, ack, nack and extend (single and batch), replay by offset, topics,
// users and grants, and the cluster's shape (members, moves, decommission, forget,
// rebalance).
//
//	c, err := client.New([]string{"127.0.0.1:7001,127.0.0.1:7002"},
//		client.WithBasicAuth("shop", os.Getenv("NARAD_PASSWORD")))
//	err = c.Produce(ctx, "orders", []byte(`{"id":1}`), client.WithKey("customer-7"))
//	msgs, err := c.Consume(ctx, "orders", client.ConsumeOptions{Max: 10, Wait: time.Second})
//	err = c.Ack(ctx, "orders", msgs[0].ReceiptHandle)
//
// Every call takes a context and goes to one node of the list; a connection error or a
// 503 moves it, and the calls after it, to the next node. Retries wait with exponential
// backoff and honour Retry-After (up to WithRetryAfterMax). They are made only where they
// are safe: a read, an ack or an admin write is tried again after a 503, a 429 or a
// connection error (an ack retried after its first attempt settled the lease answers
// ErrGone; a create retried after a 503 whose write had gone through answers
// ErrConflict); a produce is tried again only when nothing can have been stored (a 429,
// a 507, a connection that could not be made), unless the caller passes
// RetryMayDuplicate, whose retries may store a message twice.
//
// An answer with an error status is an *Error holding the status and the server's
// message; errors.Is matches it against ErrNotFound, ErrConflict, ErrUnauthorized and the
// other sentinels. When no node answers, the error is a *NodesError.
//
// Consumer runs the usual consume loop: long polls, a handler per message, an ack when it
// returns nil and a nack when it returns an error.
package client
