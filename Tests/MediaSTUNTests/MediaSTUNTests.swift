import MediaSTUN
import Testing
