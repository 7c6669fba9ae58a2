package client

import (
	"context"
	"errors"
	"time"
)

// Consumer long-polls a topic and hands each message to Handler: a nil return acks it,
// an error nacks it (it is delivered again at once, to this consumer or another). Run
// stops when its context ends. Delivery is at-least-once: Handler may see a message
// again (after a nack, a lease that expired, a crash of a node).
type Consumer struct {
	Client  *Client
	Topic   string
	Handler func(ctx context.Context, m Message) error
	// Max is the leases taken per poll (1 to 100; 0: 10). Wait is the long poll (0: 10 s).
	Max  int
	Wait time.Duration
	// Partition, when set, consumes that partition only.
	Partition *uint32
	// OnError, when set, is told of errors Run recovers from (a poll or an ack that
	// failed with a 5xx, a 429 or no node answering); Run waits and polls again.
	OnError func(error)
}

// Run polls until ctx ends (it then returns nil) or an error no wait repairs: a 4xx other
// than 429 (the topic does not exist, the credentials are refused, a grant is missing).
// The leases of a batch are settled together, acks in one request and nacks in another;
// when ctx ends mid-batch the messages not yet handled are released (nacked).
func (c *Consumer) Run(ctx context.Context) error {
	max, wait := c.Max, c.Wait
	if max == 0 {
		max = 10
	}
	if wait == 0 {
		wait = WaitMax
	}
	failures := 0
	for ctx.Err() == nil {
		msgs, err := c.Client.Consume(ctx, c.Topic, ConsumeOptions{Max: max, Wait: wait, Partition: c.Partition})
		if err == nil && len(msgs) > 0 {
			err = c.handle(ctx, msgs)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failures = 0
			continue
		case permanent(err):
			return err
		}
		if c.OnError != nil {
			c.OnError(err)
		}
		failures++
		if sleep(ctx, c.Client.backoff(failures)) != nil {
			return nil
		}
	}
	return nil
}

// handle runs Handler over msgs and settles their leases.
func (c *Consumer) handle(ctx context.Context, msgs []Message) error {
	var acks, nacks []string
	for i, m := range msgs {
		if ctx.Err() != nil {
			for _, rest := range msgs[i:] {
				nacks = append(nacks, rest.ReceiptHandle)
			}
			break
		}
		if c.Handler(ctx, m) == nil {
			acks = append(acks, m.ReceiptHandle)
		} else {
			nacks = append(nacks, m.ReceiptHandle)
		}
	}
	// Settling must not be cut by ctx ending: the work was done.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTimeout)
	defer cancel()
	return errors.Join(c.settle(sctx, acks, Settle), c.settle(sctx, nacks, Release))
}

// settle applies mode to handles; a lease no longer valid (410) is not an error here:
// its record is delivered again, as at-least-once allows.
func (c *Consumer) settle(ctx context.Context, handles []string, mode AckMode) error {
	if len(handles) == 0 {
		return nil
	}
	res, err := c.Client.AckBatch(ctx, c.Topic, handles, mode)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, ErrGone) {
			return r.Err
		}
	}
	return nil
}

// permanent reports whether err is a 4xx that a retry would meet again.
func permanent(err error) bool {
	s := StatusOf(err)
	return s >= 400 && s < 500 && s != 429
}
