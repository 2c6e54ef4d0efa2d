// ICE (RFC 8445) as a clock-driven agent: candidates, checklists, nomination, consent freshness (RFC 7675)
// and a TURN client (RFC 8656). Takes datagrams and a time, gives datagrams, timers and events.
