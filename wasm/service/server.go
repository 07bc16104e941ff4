package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/model"
)

// Server answers POST /v1/systemone with a model of the demo world, and
// GET /health. It bounds request size and concurrency, checks an optional
// bearer token, and answers CORS for the allowed origins (the preflight of
// a JSON POST with Authorization included).
type Server struct {
	Model        *model.Model
	Name         string   // reported as "model" ("clef")
	Token        string   // "" = no authentication
	AllowOrigins []string // "*" allows any origin
	MaxInFlight  int      // concurrent decisions (default 4)
	QueueWait    time.Duration
	Describe     string // what the server runs, for /health
	sem          chan struct{}
}

func (s *Server) init() {
	if s.sem == nil {
		n := s.MaxInFlight
		if n <= 0 {
			n = 4
		}
		s.sem = make(chan struct{}, n)
	}
	if s.Name == "" {
		s.Name = "clef"
	}
	if s.QueueWait == 0 {
		s.QueueWait = 10 * time.Second
	}
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	s.init()
	mux := http.NewServeMux()
	mux.HandleFunc(decision.Path, s.decide)
	mux.HandleFunc("/health", s.health)
	return s.cors(mux)
}

// CORS wraps h with CORS headers for the allowed origins: preflights are
// answered here, other requests get Access-Control-Allow-Origin.
func CORS(allow []string, h http.Handler) http.Handler {
	return (&Server{AllowOrigins: allow}).cors(h)
}

func (s *Server) allowed(origin string) bool { return Allowed(s.AllowOrigins, origin) }

// Allowed tells whether origin is one of allow: "*" stands for any origin
// but "null" (sandboxed frames, file: pages, some redirects), which is
// allowed only when listed.
func Allowed(allow []string, origin string) bool {
	for _, o := range allow {
		if (o == "*" && origin != "null") || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// cors answers the preflights of the allowed origins, adds
// Access-Control-Allow-Origin for them, and refuses (403) a request from
// any other origin: a browser sends some cross-origin requests (a form's
// POST) without asking first.
func (s *Server) cors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		origin := r.Header.Get("Origin")
		if origin != "" && !s.allowed(origin) {
			WriteError(w, http.StatusForbidden, "forbidden_origin", "requests from origin %q are not allowed", clip(origin, 100))
			return
		}
		if origin != "" {
			hd := w.Header()
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				hd.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// WriteError writes a JSON error.
func WriteError(w http.ResponseWriter, status int, typ, format string, a ...any) {
	var b decision.ErrorBody
	b.Error.Message = fmt.Sprintf(format, a...)
	b.Error.Type = typ
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, http.StatusMethodNotAllowed, "invalid_request", "use GET")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"status": "ok", "model": s.Name, "serving": s.Describe, "in_flight": len(s.sem), "capacity": cap(s.sem)})
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		WriteError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST")
		return
	}
	if s.Token != "" && !BearerOK(r.Header.Get("Authorization"), s.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="clef"`)
		WriteError(w, http.StatusUnauthorized, "authentication_error", "missing or wrong bearer token")
		return
	}
	// A JSON body, said so: a page on another origin cannot send this
	// Content-Type without a preflight, which CORS then refuses.
	if !IsJSON(r.Header.Get("Content-Type")) {
		WriteError(w, http.StatusUnsupportedMediaType, "invalid_request", "Content-Type must be application/json")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, decision.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, http.StatusRequestEntityTooLarge, "invalid_request", "request body over %d bytes", decision.MaxBody)
			return
		}
		WriteError(w, http.StatusBadRequest, "invalid_request", "the body could not be read: %v", err)
		return
	}
	var req decision.Request
	if err := DecodeStrict(data, &req); err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request", "body is not a decision request: %v", err)
		return
	}
	if err := req.Validate(); err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request", "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.QueueWait)
	defer cancel()
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, "overloaded", "all %d decision slots are busy", cap(s.sem))
		return
	}
	ids := model.Tokenize(req.Prompt, req.Options)
	res, err := s.Model.Forward(ids, req.Options)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "server_error", "%v", err)
		return
	}
	resp := decision.Response{ID: req.ID, Model: s.Name, Choice: req.Options[res.Choice], Options: req.Options, Logits: res.Logits, Probs: res.Probs}
	if req.ReturnHidden {
		resp.InputIDs = make([]int64, len(ids))
		for i, v := range ids {
			resp.InputIDs[i] = int64(v)
		}
		resp.Hidden = &decision.Hidden{DType: "F32", Shape: []int{len(res.Layers), res.T, s.Model.Arch.Hidden}, Layers: res.Layers, Data: decision.EncodeF32(res.Hidden)}
	}
	resp.TimingMS.Total = float64(time.Since(start).Microseconds()) / 1000
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Server-Timing", "total;dur="+strconv.FormatFloat(resp.TimingMS.Total, 'f', 1, 64))
	json.NewEncoder(w).Encode(resp)
}
