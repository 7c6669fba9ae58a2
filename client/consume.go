package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Limits of the consume and ack routes (API.md).
const (
	ConsumeMax  = 100              // leases of one consume
	WaitMax     = 10 * time.Second // the longest long poll the server serves
	AckBatchMax = 100              // handles of one batch ack
)

// ConsumeOptions shape one Consume.
type ConsumeOptions struct {
	Max       int           // leases to take, 1 to 100 (0: 1)
	Wait      time.Duration // long-poll up to this long for a record (the server caps it at 10 s)
	Partition *uint32       // only this partition
}

// Consume takes leases on up to Max available records for the topic's visibility
// timeout. No message (and no error) when nothing was available within Wait.
func (c *Client) Consume(ctx context.Context, topic string, o ConsumeOptions) ([]Message, error) {
	if o.Max == 0 {
		o.Max = 1
	}
	if o.Max < 1 || o.Max > ConsumeMax {
		return nil, fmt.Errorf("narad client: consume takes 1 to %d leases, not %d", ConsumeMax, o.Max)
	}
	q := url.Values{"max": {strconv.Itoa(o.Max)}}
	if o.Wait > 0 {
		q.Set("wait", o.Wait.String())
	}
	if o.Partition != nil {
		q.Set("partition", strconv.FormatUint(uint64(*o.Partition), 10))
	}
	a, err := c.do(ctx, call{method: http.MethodGet, path: pathOf("/v1/topics", topic) + "/consume", query: q,
		wait: min(o.Wait, WaitMax)})
	if err != nil || a.status == http.StatusNoContent {
		return nil, err
	}
	var page struct {
		Messages []messageJSON `json:"messages"`
	}
	if err := json.Unmarshal(a.body, &page); err != nil {
		return nil, fmt.Errorf("consume: decode the answer: %w", err)
	}
	out := make([]Message, 0, len(page.Messages))
	for _, m := range page.Messages {
		d, err := m.decode()
		if err != nil {
			return nil, fmt.Errorf("consume: decode message %d/%d: %w", m.Partition, m.Offset, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Replay reads the record at offset of a partition, without a lease. nil (and no error)
// past the end; ErrGone when retention removed it.
func (c *Client) Replay(ctx context.Context, topic string, partition uint32, offset uint64) (*Message, error) {
	q := url.Values{"partition": {strconv.FormatUint(uint64(partition), 10)},
		"offset": {strconv.FormatUint(offset, 10)}}
	a, err := c.do(ctx, call{method: http.MethodGet, path: pathOf("/v1/topics", topic) + "/consume", query: q})
	if err != nil || a.status == http.StatusNoContent {
		return nil, err
	}
	var m messageJSON
	if err := json.Unmarshal(a.body, &m); err != nil {
		return nil, fmt.Errorf("replay: decode the answer: %w", err)
	}
	d, err := m.decode()
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &d, nil
}

// AckMode is what an acknowledgement does with a lease.
type AckMode int

// The three ways to end or renew a lease.
const (
	Settle  AckMode = iota // ack: the record is done
	Extend                 // renew the lease for a full visibility timeout
	Release                // nack: the record is deliverable again at once
)

func (m AckMode) query(q url.Values) url.Values {
	switch m {
	case Extend:
		q.Set("extend", "true")
	case Release:
		q.Set("extend", "0")
	}
	return q
}

// Ack settles a lease. ErrGone: the lease is no longer valid (expired, settled, or
// redelivered; a retried ack whose first attempt had settled it also answers this).
func (c *Client) Ack(ctx context.Context, topic, handle string) error {
	return c.ackOne(ctx, topic, handle, Settle)
}

// Nack releases a lease: the record is deliverable again at once.
func (c *Client) Nack(ctx context.Context, topic, handle string) error {
	return c.ackOne(ctx, topic, handle, Release)
}

// Extend renews a lease for a full visibility timeout.
func (c *Client) Extend(ctx context.Context, topic, handle string) error {
	return c.ackOne(ctx, topic, handle, Extend)
}

func (c *Client) ackOne(ctx context.Context, topic, handle string, mode AckMode) error {
	q := mode.query(url.Values{"receipt_handle": {handle}})
	_, err := c.do(ctx, call{method: http.MethodPost, path: pathOf("/v1/topics", topic) + "/ack", query: q})
	return err
}

// AckResult is one handle's outcome in a batch: Status 204 when done, else the error
// (ErrGone for a lease no longer valid).
type AckResult struct {
	Status int
	Err    error
}

// AckBatch applies mode to 1 to 100 leases in one request; the results are in the order
// of handles.
func (c *Client) AckBatch(ctx context.Context, topic string, handles []string, mode AckMode) ([]AckResult, error) {
	if len(handles) == 0 || len(handles) > AckBatchMax {
		return nil, fmt.Errorf("narad client: a batch ack holds 1 to %d handles, not %d", AckBatchMax, len(handles))
	}
	body, err := json.Marshal(struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}{handles})
	if err != nil {
		return nil, err
	}
	path := pathOf("/v1/topics", topic) + "/ack"
	a, err := c.do(ctx, call{method: http.MethodPost, path: path, query: mode.query(url.Values{}),
		body: body, contentType: "application/json"})
	if err != nil {
		return nil, err
	}
	var out struct {
		Results []struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil || len(out.Results) != len(handles) {
		return nil, fmt.Errorf("batch ack: %d results for %d handles (%v)", len(out.Results), len(handles), err)
	}
	res := make([]AckResult, len(handles))
	for i, r := range out.Results {
		res[i].Status = r.Status
		if r.Status >= 300 {
			res[i].Err = &Error{Status: r.Status, Message: r.Error, Method: http.MethodPost, Path: path, Node: a.node}
		}
	}
	return res, nil
}
