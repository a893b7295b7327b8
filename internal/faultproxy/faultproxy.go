// Package faultproxy is a TCP proxy for tests that injects network faults between a
// client and a server: cut (connections closed, new ones refused), reset (connections
// reset, RST), black hole (connections stay open, nothing gets through either way) and
// delay (every chunk held for a while). It is safe for concurrent use.
package faultproxy

import (
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does to traffic.
type Mode int

const (
	// Pass forwards everything.
	Pass Mode = iota
	// Cut closes every connection and closes new ones at once.
	Cut
	// Reset resets every connection (RST) and resets new ones at once.
	Reset
	// BlackHole keeps connections open and drops every byte, both ways.
	BlackHole
	// Delay forwards every chunk after the delay set with SetDelay.
	Delay
)

func (m Mode) String() string {
	return [...]string{"pass", "cut", "reset", "black_hole", "delay"}[m]
}

// Proxy forwards connections from its address to a target.
type Proxy struct {
	ln     net.Listener
	target string
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	mode  Mode
	delay time.Duration
	conns map[net.Conn]struct{} // client and server sides
}

// New listens on a free local port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode. Cut and Reset also end every open connection.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	var victims []net.Conn
	if m == Cut || m == Reset {
		for c := range p.conns {
			victims = append(victims, c)
			delete(p.conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		end(c, m)
	}
}

// SetDelay sets the delay of Delay mode and switches to it.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
	p.Set(Delay)
}

// Close stops the proxy and ends every connection.
func (p *Proxy) Close() error {
	close(p.done)
	err := p.ln.Close()
	p.Set(Cut)
	p.wg.Wait()
	return err
}

func end(c net.Conn, m Mode) {
	if tc, ok := c.(*net.TCPConn); ok && m == Reset {
		_ = tc.SetLinger(0) // close sends RST
	}
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		m := p.mode
		p.mu.Unlock()
		if m == Cut || m == Reset {
			end(c, m)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == Cut || p.mode == Reset {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			server.Close()
		}
		p.forget(client)
		client.Close()
		return
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(server, client) }()
	go func() { defer pumps.Done(); p.pump(client, server) }()
	pumps.Wait()
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pump copies from src to dst chunk by chunk, applying the mode in force when each
// chunk arrives. When either side ends, both are closed.
func (p *Proxy) pump(dst, src net.Conn) {
	defer func() {
		p.forget(src)
		p.forget(dst)
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			m, d := p.mode, p.delay
			p.mu.Unlock()
			switch m {
			case BlackHole:
				continue
			case Delay:
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-p.done:
					t.Stop()
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or an error: both sides end
		}
	}
}
