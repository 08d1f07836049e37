"""The gateway's golden corpus: protobuf messages and the exact client JSON they become."""
