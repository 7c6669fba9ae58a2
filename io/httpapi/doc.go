// Package httpapi is a node's HTTP layer: it turns the requests of /work/shared/API.md into
// calls on a Broker (io/nodeshell implements it) and the Broker's answers and errors into
// responses. It holds no broker state of its own.
//
// How it is driven:
//
//	srv := httpapi.New(shell, httpapi.Options{Logger: log, InFlightMax: 4096})
//	hs := &http.Server{Addr: ":7942", Handler: srv.Handler()}
//	go hs.ListenAndServe()
//	…
//	srv.BeginShutdown() // healthz and every /v1 route answer 503 from now on
//	hs.Shutdown(ctx)    // waits for requests being served, long polls included (≤ 10 s)
//
// Routes: GET /healthz, GET /readyz, GET /metrics, GET|POST /v1/topics,
// GET|PATCH|DELETE /v1/topics/{topic}, POST /v1/topics/{topic}/produce,
// POST /v1/topics/{topic}/produce/batch, GET /v1/topics/{topic}/consume,
// POST /v1/topics/{topic}/ack, GET|POST /v1/users, GET|DELETE /v1/users/{name},
// PUT /v1/users/{name}/grants, PUT /v1/users/{name}/password, GET /v1/cluster/members,
// POST /v1/cluster/members/{id}/forget?dry_run=true|false,
// POST|DELETE /v1/cluster/members/{id}/decommission?dry_run=true|false,
// GET|POST /v1/cluster/moves, POST /v1/cluster/moves/{topic}/{partition}/abort,
// POST /v1/cluster/rebalance (admin routes: access.go; the moves, moves.go),
// GET /v1/openapi.json with GET /v1/openapi.yaml: the API's OpenAPI 3.1 document
// (package api, api/openapi.yaml), for any user, like every /v1 route, and GET /ui/, the
// status page of io/statusui, open like /healthz (it holds no data; its script calls the
// routes above with the viewer's credentials; GET /ui redirects to it).
//
// routes.go declares them in one table with every status each can answer; the server
// registers exactly that table, its tests fail on an answer whose status its route does
// not declare, and the api package's test on a route or status that api/openapi.yaml does
// not list, or lists but the table does not.
//
// # Errors
//
// Every error is answered {"error":"<message>"} as application/json. statusOf (errors.go)
// is the one mapping: this layer's own request errors carry their status (400, 404, 405,
// 413, 415); the node's sentinels map by errors.Is (ErrTopicNotFound, ErrUserNotFound and
// ErrMemberNotFound 404, ErrTopicExists, ErrUserExists and ErrRefused 409,
// ErrInvalid and ErrPartitionRange 400, ErrBusy 429, ErrWALFailed, ErrMetastoreFailed and
// ErrCorrupt 500, ErrShuttingDown, ErrNotReady and ErrPartitionFailed 503, ErrNoSpace 507,
// ErrLeaseGone, ErrBadHandle and ErrOffsetRemoved 410; ErrPartitionFailed and ErrNoSpace
// carry Retry-After: 1); a context deadline or cancellation is 503; anything else is 500.
// A wrong method on a known path is 405 with an Allow header; an unknown path is 404.
//
// # Where API.md is silent (our choices)
//
//   - A produce that finds the WAL's device full is 507 (nothing of it written); one
//     pinned to a partition that failed at this node is 503. A failed partition shows
//     "state":"failed" in partition_stats (absent when healthy).
//   - Query parameters that a route does not know are ignored; of a repeated one the first
//     counts. A malformed escape in the query is a 400. key= (empty) is an empty key, not
//     no key. A key is at most 4 KiB (the WAL's bound).
//   - The Content-Type rule (415) of the single produce applies to every POST, PUT, PATCH
//     and DELETE that carries a body (serveHTTP checks it before the handler):
//     application/json or application/octet-stream, or an X-Narad-Client header.
//   - A single produce with a Content-Length over 1 MiB is refused (413) before its body is
//     read; a chunked one is cut off by http.MaxBytesReader at 1 MiB + 1 byte.
//   - InFlightMax counts single and batch produces together; the permit is taken before the
//     body is read, so the cap also bounds the memory of bodies being read.
//   - Batch produce: message indexes in error texts count from 0 ("message 0: …"); a message
//     over 1 MiB (after base64 decoding) is a 400 like every other invalid message; a base64
//     payload must be a JSON string of standard padded base64, and so must a base64 key;
//     key_encoding without a key is a 400; "payload": null is the 4-byte message "null".
//     Its 16 MiB bound is on the request body, checked like the single produce's.
//   - Consume: timestamp is integer Unix seconds (commit time in ms / 1000). A payload is
//     verbatim only when it is valid JSON and valid UTF-8. offset may be combined with max
//     (the broker gets Max and decides how many it replays); the answer's shape follows max.
//     X-Narad-Wait-Clamped is set (to "true") on whatever the clamped request answers.
//   - Ack: extend accepts exactly "true" and "0"; other values (false, 1, …) are a 400. A
//     receipt_handle in the query makes the request single (the body is ignored); an empty
//     one is a 400. Without one, the body must be the batch object; no body is a 400. In a
//     batch, each result's status comes from statusOf, so a broken broker error shows as 500.
//   - Topics: GET /v1/topics?limit takes 1.. and clamps above 1,000 (default 100).
//     next_page_token is always present and "" on the last page; a page token is the
//     unpadded base64url of the last name returned, and an undecodable one is a 400.
//     POST answers 201 with a Location header. partition_stats is always an array.
//     PATCH accepts the four settable fields (not name); {} changes nothing and answers 200.
//   - /healthz and /readyz answer {"status":"ok"} when healthy and ready; /readyz answers
//     503 with the broker's reason otherwise, and 503 once shutdown began. /metrics keeps
//     serving during shutdown.
//   - Only GET is served on the GET routes (no implicit HEAD): a consume takes leases.
//
// # Performance
//
// The single produce is the path DESIGN.md section 7 counts: the handler reads the query
// without url.Values, reads the body into one slice of Content-Length bytes (the payload is
// the broker's from then on: the node keeps it for its dispatcher, so it cannot be pooled),
// passes a pooled one-element slice to Produce, and answers 202 with no body. Metric children
// are cached per route and status and per topic; the debug line is built only when debug is
// enabled. BenchmarkProduceHandler measures it.
//
// # Metrics
//
// narad_http_requests_total{route,status} and narad_http_request_duration_seconds{route},
// where route is the pattern ("POST /v1/topics/{topic}/produce"; a 405 is counted under the
// bare path, an unknown path as "unmatched"), and narad_produced_messages_total,
// narad_produced_bytes_total, narad_consumed_messages_total and narad_consumed_bytes_total,
// each by topic. A deleted topic's series are removed.
package httpapi
