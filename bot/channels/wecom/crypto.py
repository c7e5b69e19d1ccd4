"""WeCom's callback message crypto, on the `cryptography` package.

    signature  = SHA1 of the sorted, concatenated [token, timestamp, nonce, ciphertext], hex
    key        = base64(EncodingAESKey + "="): 32 bytes (AES-256); the IV is its first 16 bytes
    plaintext  = 16 random bytes + message length (4 bytes, big-endian) + message + receive-id
    padding    = PKCS#7 to a multiple of 32 bytes;  ciphertext = base64(AES-256-CBC(padded plaintext))

The receive-id is the corp id for a self-built app and the empty string for the AI bot. Checks run
before anything is parsed: the signature (constant-time compare), the timestamp (within ±300 s), the
nonce (never seen before within the window; the official samples do not check this), then the
padding, the length and the receive-id. Errors say what failed, never a key, a token or plaintext; once the
signature holds every failure is answered alike (`UNREADABLE`) and only the log says which.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
import time
from collections.abc import Callable, Mapping

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

BLOCK = 32
MAX_SKEW_S = 300
NONCE_TTL_S = 900  # longer than the ±300 s window a replay could still pass in


#: what every callback that passed the signature but cannot be read is answered, whatever the cause (padding,
#: length, receive-id, encoding, the message's format or addressee): one status and one body, so the answer
#: says nothing about the plaintext to whoever holds the token; the cause goes to the log only
UNREADABLE = "rejected: the message could not be read"
UNREADABLE_STATUS = 400


class CallbackRejected(Exception):
    """A callback that must not be processed; `reason` is safe to log (no secret, no plaintext), `answer` is
    what the caller is told: the reason itself before the signature holds, `UNREADABLE` after it."""

    def __init__(self, reason: str, status: int = 403, answer: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.answer = answer or f"rejected: {reason}"

    @classmethod
    def after_signature(cls, reason: str) -> CallbackRejected:
        """A failure once the signature has held: logged with `reason`, answered with the uniform `UNREADABLE`."""
        return cls(reason, UNREADABLE_STATUS, UNREADABLE)


def aes_key(encoding_aes_key: str) -> bytes:
    """The 32-byte AES key from the console's 43-character EncodingAESKey."""
    try:
        key = base64.b64decode(encoding_aes_key + "=", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(encoding_aes_key) != 43 or len(key) != 32:
        raise ValueError("the EncodingAESKey must be the 43 characters the WeCom console shows")
    return key


def signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode("utf-8")).hexdigest()


class WeComCrypto:
    """Verify, decrypt and encrypt for one callback URL (one token, one key, one receive-id)."""

    def __init__(
        self,
        token: str,
        encoding_aes_key: str,
        receive_id: str,
        seen_nonce: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.token = token
        self.key = aes_key(encoding_aes_key)
        self.receive_id = receive_id
        self.first_nonce = seen_nonce  # True the first time a (timestamp, nonce) pair is offered
        self.clock = clock

    # ---- checks -----------------------------------------------------------------------------
    def verify(
        self, msg_signature: str | None, timestamp: str | None, nonce: str | None, encrypted: str | None
    ) -> None:
        """Signature, timestamp window and nonce replay, in that order; raises `CallbackRejected`."""
        if not (msg_signature and timestamp and nonce and encrypted):
            raise CallbackRejected("missing signature, timestamp, nonce or ciphertext", 400)
        expected = signature(self.token, timestamp, nonce, encrypted)
        if not hmac.compare_digest(expected.encode(), msg_signature.lower().encode("utf-8", "replace")):
            raise CallbackRejected("bad signature")
        try:
            sent = int(timestamp)
        except ValueError:
            raise CallbackRejected("timestamp is not a number", 400) from None
        if abs(self.clock() - sent) > MAX_SKEW_S:
            raise CallbackRejected("timestamp outside the ±300 s window")
        if self.first_nonce is not None and not self.first_nonce(f"{timestamp}:{nonce}"):
            raise CallbackRejected("replayed nonce")

    def open(self, msg_signature: str | None, timestamp: str | None, nonce: str | None, encrypted: str | None) -> str:
        """Verify then decrypt: the callback's plaintext (JSON for the AI bot, XML for the app)."""
        self.verify(msg_signature, timestamp, nonce, encrypted)
        return self.decrypt(encrypted or "")

    def open_callback(self, query: Mapping[str, str], encrypted: str | None) -> str:
        """The one check every WeCom callback goes through — the AI bot's JSON, the app's XML and both URL
        checks: `msg_signature`, `timestamp` and `nonce` from the request's query string over `encrypted`
        (the body's ciphertext, or `echostr`), then decryption. Raises `CallbackRejected`."""
        return self.open(query.get("msg_signature"), query.get("timestamp"), query.get("nonce"), encrypted)

    # ---- AES ---------------------------------------------------------------------------------
    def decrypt(self, encrypted: str) -> str:
        try:
            data = base64.b64decode(encrypted, validate=True)
        except (binascii.Error, ValueError):
            raise CallbackRejected.after_signature("ciphertext is not base64") from None
        if not data or len(data) % 16:
            raise CallbackRejected.after_signature("ciphertext length is not a whole number of blocks")
        dec = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).decryptor()
        padded = dec.update(data) + dec.finalize()
        pad = padded[-1]
        if not 1 <= pad <= BLOCK or padded[-pad:] != bytes([pad]) * pad:
            raise CallbackRejected.after_signature("bad padding")
        plain = padded[:-pad]
        if len(plain) < 20:
            raise CallbackRejected.after_signature("plaintext too short")
        (length,) = struct.unpack(">I", plain[16:20])
        if 20 + length > len(plain):
            raise CallbackRejected.after_signature("message length out of range")
        message, receive_id = plain[20 : 20 + length], plain[20 + length :]
        if not hmac.compare_digest(receive_id, self.receive_id.encode("utf-8")):
            raise CallbackRejected.after_signature("wrong receive-id")
        try:
            return message.decode("utf-8")
        except UnicodeDecodeError:
            raise CallbackRejected.after_signature("message is not UTF-8") from None

    def encrypt(self, message: str, random16: bytes | None = None) -> str:
        body = message.encode("utf-8")
        plain = (random16 or os.urandom(16)) + struct.pack(">I", len(body)) + body + self.receive_id.encode("utf-8")
        pad = BLOCK - len(plain) % BLOCK
        enc = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).encryptor()
        return base64.b64encode(enc.update(plain + bytes([pad]) * pad) + enc.finalize()).decode("ascii")

    def seal(self, message: str, timestamp: str | None = None, nonce: str | None = None) -> dict[str, str]:
        """An encrypted passive reply as the AI bot expects it: {encrypt, msgsignature, timestamp, nonce}."""
        timestamp = timestamp or str(int(self.clock()))
        nonce = nonce or os.urandom(8).hex()
        encrypted = self.encrypt(message)
        return {
            "encrypt": encrypted,
            "msgsignature": signature(self.token, timestamp, nonce, encrypted),
            "timestamp": timestamp,
            "nonce": nonce,
        }
