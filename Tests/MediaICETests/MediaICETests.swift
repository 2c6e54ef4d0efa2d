import MediaICE
import Testing
