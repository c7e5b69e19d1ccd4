"""WeCom's message crypto, checked against an independent implementation (wechatpy) in both directions,
and every rejection: bad signature, stale or future timestamp, replayed nonce, wrong receive-id, garbage."""

from __future__ import annotations

import base64
import os
import time

import pytest
from wechatpy.enterprise.crypto import PrpCrypto, WeChatCrypto
from wechatpy.utils import to_text

from bot.channels.wecom.crypto import CallbackRejected, WeComCrypto, aes_key, signature

AES_KEY = base64.b64encode(os.urandom(32)).decode().rstrip("=")  # 43 characters, as the console shows
TOKEN = "tokenForTests123"
CORP = "ww0123456789abcdef"
MESSAGE = '{"msgid":"m1","text":{"content":"8卡H800全参微调7B要多久？"}}'


def _theirs_encrypt(text: str, receive_id: str, random16: str | None = None) -> str:
    prp = PrpCrypto(base64.b64decode(AES_KEY + "="))
    if random16 is not None:
        prp.get_random_string = lambda: random16
    return to_text(prp.encrypt(text, receive_id))


def _theirs_decrypt(ciphertext: str, receive_id: str) -> str:
    return PrpCrypto(base64.b64decode(AES_KEY + "=")).decrypt(ciphertext, receive_id)


@pytest.mark.parametrize("receive_id", [CORP, ""])  # the self-built app, the AI bot
def test_both_directions_agree_with_wechatpy(receive_id):
    ours = WeComCrypto(TOKEN, AES_KEY, receive_id)
    assert _theirs_decrypt(ours.encrypt(MESSAGE), receive_id) == MESSAGE
    assert ours.decrypt(_theirs_encrypt(MESSAGE, receive_id)) == MESSAGE
    # the same random prefix gives byte-identical ciphertext: the padding to 32 bytes and the layout agree
    r16 = "abcdefghijklmnop"
    assert ours.encrypt(MESSAGE, random16=r16.encode()) == _theirs_encrypt(MESSAGE, receive_id, r16)
    for size in range(0, 70):  # every padding length from 1 to 32 bytes
        text = "x" * size
        assert ours.encrypt(text, random16=r16.encode()) == _theirs_encrypt(text, receive_id, r16)


def test_the_signature_is_the_one_wechatpy_checks():
    echo = _theirs_encrypt("echo-1234567890", CORP)
    ts, nonce = str(int(time.time())), "nonce42"
    sig = signature(TOKEN, ts, nonce, echo)
    assert WeChatCrypto(TOKEN, AES_KEY, CORP).check_signature(sig, ts, nonce, echo) == "echo-1234567890"
    assert WeComCrypto(TOKEN, AES_KEY, CORP).open(sig, ts, nonce, echo) == "echo-1234567890"


def test_an_encrypted_xml_callback_built_by_wechatpy_opens():
    xml = f"<xml><ToUserName><![CDATA[{CORP}]]></ToUserName><Content><![CDATA[显存够吗]]></Content></xml>"
    ts, nonce = str(int(time.time())), "n1"
    sealed = WeChatCrypto(TOKEN, AES_KEY, CORP).encrypt_message(xml, nonce, ts)
    enc = sealed.split("<Encrypt><![CDATA[")[1].split("]]>")[0]
    sig = sealed.split("<MsgSignature><![CDATA[")[1].split("]]>")[0]
    assert WeComCrypto(TOKEN, AES_KEY, CORP).open(sig, ts, nonce, enc) == xml


def test_a_sealed_reply_opens_with_wechatpy():
    sealed = WeComCrypto(TOKEN, AES_KEY, "").seal('{"msgtype":"stream"}', timestamp="1700000000", nonce="abc")
    assert sealed["msgsignature"] == signature(TOKEN, "1700000000", "abc", sealed["encrypt"])
    assert _theirs_decrypt(sealed["encrypt"], "") == '{"msgtype":"stream"}'


def _reject(crypto: WeComCrypto, *args) -> CallbackRejected:
    with pytest.raises(CallbackRejected) as caught:
        crypto.open(*args)
    text = caught.value.reason
    assert TOKEN not in text and AES_KEY not in text and "显存" not in text and "8卡" not in text
    return caught.value


def test_every_bad_callback_is_rejected_with_a_reason_that_holds_no_secret():
    seen: set[str] = set()

    def first(key: str) -> bool:
        if key in seen:
            return False
        seen.add(key)
        return True

    now = time.time()
    crypto = WeComCrypto(TOKEN, AES_KEY, "", seen_nonce=first, clock=lambda: now)
    enc = _theirs_encrypt(MESSAGE, "")
    ts = str(int(now))
    good = signature(TOKEN, ts, "n1", enc)
    assert _reject(crypto, "0" * 40, ts, "n1", enc).reason == "bad signature"
    old = str(int(now) - 301)
    assert _reject(crypto, signature(TOKEN, old, "n2", enc), old, "n2", enc).reason.startswith("timestamp outside")
    future = str(int(now) + 301)
    assert _reject(crypto, signature(TOKEN, future, "n3", enc), future, "n3", enc).reason.startswith(
        "timestamp outside"
    )
    assert crypto.open(good, ts, "n1", enc) == MESSAGE
    assert _reject(crypto, good, ts, "n1", enc).reason == "replayed nonce"
    other = _theirs_encrypt(MESSAGE, CORP)  # right key, wrong receive-id
    assert _reject(crypto, signature(TOKEN, ts, "n4", other), ts, "n4", other).reason == "wrong receive-id"
    assert _reject(crypto, signature(TOKEN, ts, "n5", "%%%"), ts, "n5", "%%%").status == 400
    junk = base64.b64encode(os.urandom(48)).decode()
    assert _reject(crypto, signature(TOKEN, ts, "n6", junk), ts, "n6", junk).status in (400, 403)
    assert _reject(crypto, None, ts, "n7", enc).status == 400


def test_the_aes_key_must_be_the_consoles_43_characters():
    with pytest.raises(ValueError, match="43 characters"):
        aes_key("short")
    assert len(aes_key(AES_KEY)) == 32
