import MediaPeer
import Testing
