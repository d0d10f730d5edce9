"""List+watch into compact stores: the watcher (resume, relist on 410, dead-connection
detection), the informer (a store, handlers, transforms, resync), and the cache of shared
informers with field indexes and read-your-own-writes."""
