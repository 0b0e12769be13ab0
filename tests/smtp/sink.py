"""A real SMTP server for the email approval tests (tests/src/smtp.rs).

Usage: sink.py PORT DIR. Listens on 127.0.0.1:PORT with aiosmtpd and
writes every message it accepts to DIR as NNNN.json (written to a
temporary name, then renamed, so a reader never sees half a file):
{"mail_from", "rcpt_tos", "subject", "from", "to", "content_type",
"parts": [{"content_type", "body"}]} with the bodies decoded. Prints
"ready" once it accepts connections; stops on SIGTERM or SIGINT.
"""

import email
import email.policy
import json
import os
import signal
import sys
import threading

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        parts = [
            {"content_type": part.get_content_type(), "body": part.get_content()}
            for part in message.walk()
            if not part.is_multipart()
        ]
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "subject": str(message.get("Subject", "")),
            "from": str(message.get("From", "")),
            "to": str(message.get("To", "")),
            "content_type": message.get_content_type(),
            "parts": parts,
        }
        with self.lock:
            self.count += 1
            name = os.path.join(self.directory, f"{self.count:04d}.json")
        with open(name + ".tmp", "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.rename(name + ".tmp", name)
        return "250 Message accepted for delivery"


def main():
    port, directory = int(sys.argv[1]), sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    controller = Controller(Sink(directory), hostname="127.0.0.1", port=port)
    controller.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
