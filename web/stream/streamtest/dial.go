// Package streamtest holds what the stream's tests and load tools share: a
// viewer that connects the way a browser does.
package streamtest

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Dial connects a websocket viewer to url as a browser would, offering
// permessage-deflate (browsers always do, so the server compresses for
// them), and adds the bytes it reads off the socket, compressed frames
// included, to wire. The handshake response is returned with its body
// closed, for its headers.
func Dial(ctx context.Context, url string, wire *atomic.Int64) (*websocket.Conn, *http.Response, error) {
	dialer := websocket.Dialer{
		HandshakeTimeout:  30 * time.Second,
		ReadBufferSize:    16 << 10,
		EnableCompression: true,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: wire}, nil
		},
	}
	conn, resp, err := dialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	return conn, resp, err
}

// countingConn counts the bytes read from the network, before gorilla
// inflates them.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}
