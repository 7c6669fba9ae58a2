// Package net will hold the node-to-node transport: quic-go connections between peers,
// typed and versioned frames, and peer authentication (DESIGN.md section 4). Nothing
// crosses a network yet: a single node needs no transport. The cluster issue fills this
// package; its simulated counterpart lives in sim/.
package net
