import MediaCore
