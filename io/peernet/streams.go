package peernet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"
)

// Every message travels on a stream of its own: a one-way message is one envelope and the
// stream's end; a request is one envelope each way.

// Send sends a one-way message, best effort: it fails at once without a connection, and
// gives up after SendTimeout. The peer may not get it.
func (t *Transport) Send(to uint64, body []byte) error {
	b, err := appendEnvelope(nil, envelope{kind: kindOneWay, body: body})
	if err != nil {
		return err
	}
	conn, _ := t.conn(to)
	if conn == nil || conn.Context().Err() != nil {
		return fmt.Errorf("%w %d", ErrNoConnection, to)
	}
	st, err := conn.OpenStream()
	if err != nil {
		return err
	}
	_ = st.SetWriteDeadline(time.Now().Add(SendTimeout))
	if _, err := st.Write(b); err != nil {
		st.CancelWrite(0)
		return err
	}
	return st.Close()
}

// Request sends body to peer to and returns its answer. It waits for a connection within
// ctx. An error wrapping context.DeadlineExceeded (or Canceled) means no answer came in
// time: the peer may still have acted on the request.
func (t *Transport) Request(ctx context.Context, to uint64, body []byte) ([]byte, error) {
	t.mu.Lock()
	t.reqID++
	id := t.reqID
	t.mu.Unlock()
	b, err := appendEnvelope(nil, envelope{kind: kindRequest, id: id, body: body})
	if err != nil {
		return nil, err
	}
	conn, err := t.waitConn(ctx, to)
	if err != nil {
		return nil, err
	}
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, t.ctxErr(ctx, err)
	}
	stop := context.AfterFunc(ctx, func() { st.CancelRead(0); st.CancelWrite(0) })
	defer stop()
	if _, err := st.Write(b); err != nil {
		return nil, t.ctxErr(ctx, err)
	}
	if err := st.Close(); err != nil {
		return nil, t.ctxErr(ctx, err)
	}
	e, err := readEnvelope(st)
	if err != nil {
		return nil, t.ctxErr(ctx, err)
	}
	switch {
	case e.id != id:
		return nil, fmt.Errorf("%w: answer to request %d on request %d's stream", ErrCorrupt, e.id, id)
	case e.kind == kindError:
		return nil, &RemoteError{Msg: string(e.body)}
	case e.kind != kindResponse:
		return nil, fmt.Errorf("%w: kind %d answers a request", ErrCorrupt, e.kind)
	}
	return e.body, nil
}

// ctxErr prefers the context's error (the caller gave up) to the stream's.
func (t *Transport) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("net: request: %w", ctx.Err())
	}
	if t.ctx.Err() != nil {
		return ErrClosed
	}
	return err
}

// serveStream reads one envelope from a stream a peer opened and handles it.
func (t *Transport) serveStream(from uint64, st *quic.Stream) {
	defer t.wg.Done()
	_ = st.SetReadDeadline(time.Now().Add(HandlerTimeout))
	e, err := readEnvelope(st)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			t.log.Warn("malformed message from a peer", "peer", from, "err", err)
		}
		st.CancelRead(0)
		st.CancelWrite(0)
		return
	}
	switch e.kind {
	case kindOneWay:
		st.CancelWrite(0) // nothing goes back
		t.h.OnMessage(from, e.body)
	case kindRequest:
		t.answer(from, st, e)
	default:
		st.CancelRead(0)
		st.CancelWrite(0)
	}
}

func (t *Transport) answer(from uint64, st *quic.Stream, req envelope) {
	ctx, cancel := context.WithTimeout(t.ctx, HandlerTimeout)
	defer cancel()
	body, err := t.h.OnRequest(ctx, from, req.body)
	resp := envelope{kind: kindResponse, id: req.id, body: body}
	if err != nil {
		resp = envelope{kind: kindError, id: req.id, body: []byte(err.Error())}
	}
	b, err := appendEnvelope(nil, resp)
	if err != nil {
		b, _ = appendEnvelope(nil, envelope{kind: kindError, id: req.id, body: []byte(err.Error())})
	}
	_ = st.SetWriteDeadline(time.Now().Add(HandlerTimeout))
	if _, err := st.Write(b); err != nil {
		st.CancelWrite(0)
		return
	}
	_ = st.Close()
}
