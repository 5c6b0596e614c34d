package main

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// plainHub is the anchor design: gorilla's chat hub as it is, one goroutine
// owning the clients and a broadcast channel, every step marshalled once and
// written to each viewer as its own frame (no batching, no shared framing).
type plainHub struct {
	broadcast  chan []byte
	register   chan *hubClient
	unregister chan *hubClient
	clients    atomic.Int64
	dropped    atomic.Int64
	queued     atomic.Int64 // frames queued to viewers
	upgrader   websocket.Upgrader
}

type hubClient struct {
	hub  *plainHub
	conn *websocket.Conn
	send chan []byte
}

func newPlainHub() *plainHub {
	return &plainHub{
		broadcast:  make(chan []byte),
		register:   make(chan *hubClient),
		unregister: make(chan *hubClient),
		upgrader:   websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024},
	}
}

func (h *plainHub) run(done <-chan struct{}) {
	clients := map[*hubClient]bool{}
	for {
		select {
		case <-done:
			for c := range clients {
				close(c.send)
			}
			return
		case c := <-h.register:
			clients[c] = true
		case c := <-h.unregister:
			if clients[c] {
				delete(clients, c)
				close(c.send)
			}
		case msg := <-h.broadcast:
			for c := range clients {
				select {
				case c.send <- msg:
					h.queued.Add(1)
				default:
					close(c.send)
					delete(clients, c)
					h.dropped.Add(1)
				}
			}
		}
		h.clients.Store(int64(len(clients)))
	}
}

func (h *plainHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &hubClient{hub: h, conn: conn, send: make(chan []byte, 256)}
	h.register <- c
	go c.writePump()
	go c.readPump()
}

func (c *hubClient) readPump() {
	defer func() {
		c.hub.unregister <- c
		_ = c.conn.Close()
	}()
	c.conn.SetReadLimit(512)
	_ = c.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(60 * time.Second)) })
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			return
		}
	}
}

func (c *hubClient) writePump() {
	ping := time.NewTicker(54 * time.Second)
	defer func() {
		ping.Stop()
		_ = c.conn.Close()
	}()
	for {
		select {
		case msg, ok := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if !ok {
				_ = c.conn.WriteMessage(websocket.CloseMessage, []byte{})
				return
			}
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}
