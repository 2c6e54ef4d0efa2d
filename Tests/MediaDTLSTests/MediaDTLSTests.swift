import MediaDTLS
import Testing
