import MediaPeer

/// Hands each loop the other's ICE credentials and certificate fingerprint, as an offer and an answer
/// would: the offerer controls ICE and is the DTLS server, the answerer (setup:active) the client.
func exchangeTransportDescriptions(offerer: PeerTransportLoop, answerer: PeerTransportLoop) throws {
    let (offererCredentials, offererFingerprint) = offerer.withTransport { core, _ in
        (core.ice.localCredentials, core.certificate.fingerprint)
    }
    let (answererCredentials, answererFingerprint) = answerer.withTransport { core, _ in
        (core.ice.localCredentials, core.certificate.fingerprint)
    }
    try answerer.withTransport { core, now in
        try core.setRemote(credentials: offererCredentials, fingerprint: offererFingerprint, dtlsRole: .client, now: now)
    }
    try offerer.withTransport { core, now in
        try core.setRemote(credentials: answererCredentials, fingerprint: answererFingerprint, dtlsRole: .server, now: now)
    }
}
