"""Which URLs and addresses a webhook may call (SPEC §16): the SSRF guard's pure half."""

from __future__ import annotations

import ipaddress

import pytest

from webhooks.core.addresses import URL_MAX, Refused, Target, parse, refusal


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.255.254", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped
        ("2002:7f00:1::", "a loopback address"),  # 6to4 of 127.0.0.1
        ("10.1.2.3", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd00::1", "a private address"),
        ("169.254.169.254", "a link-local address"),  # cloud metadata
        ("fe80::1", "a link-local address"),
        ("0.0.0.0", "a private address"),
        ("100.64.0.1", "a reserved address"),  # shared address space (carrier NAT)
        ("224.0.0.1", "a reserved address"),
        ("240.0.0.1", "a private address"),
        ("255.255.255.255", "a private address"),
    ],
)
def test_inner_addresses_are_refused(address: str, why: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize("address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_may_be_called(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_a_url_names_its_scheme_host_and_port() -> None:
    assert parse("https://hooks.example.com/lens?x=1", allow_http=False) == Target(
        "https", "hooks.example.com", 443
    )
    assert parse("http://[::1]:8080/", allow_http=True) == Target("http", "::1", 8080)
    assert parse("https://bücher.example/", allow_http=False).host == "xn--bcher-kva.example"
    # The ends of the port range are ports; an empty port is the scheme's own.
    assert parse("https://hooks.example.com:1/", allow_http=False).port == 1
    assert parse("https://hooks.example.com:65535/", allow_http=False).port == 65535
    assert parse("https://hooks.example.com:/", allow_http=False).port == 443


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://hooks.example.com/", "must start with https://"),
        ("ftp://hooks.example.com/", "must start with https://"),
        ("hooks.example.com/path", "must start with https://"),
        ("https://user:secret@hooks.example.com/", "user name or password"),
        ("https:///path", "must name a host"),
        ("https://hooks.example.com:0/", "port must be a number from 1 to 65535"),
        ("https://hooks.example.com:00/", "port must be a number from 1 to 65535"),
        ("https://[2606:4700::1]:0/", "port must be a number from 1 to 65535"),
        ("https://hooks.example.com:65536/", "port must be a number from 1 to 65535"),
        ("https://hooks.example.com:99999/", "port must be a number from 1 to 65535"),
        ("https://hooks.example.com:-1/", "port must be a number from 1 to 65535"),
        ("https://hooks.example.com:443x/", "port must be a number from 1 to 65535"),
        ("https://[::1/", "not a URL"),
        ("https://hooks.example.com/a b", "spaces or control characters"),
        ("https://hooks.example.com/\x00", "spaces or control characters"),
        ("https://" + "a" * URL_MAX, f"at most {URL_MAX} characters"),
    ],
)
def test_bad_urls_are_refused_saying_why(url: str, said: str) -> None:
    with pytest.raises(Refused, match=said):
        parse(url, allow_http=False)


def test_the_longest_url_is_accepted_and_one_more_is_not() -> None:
    base = "https://hooks.example.com/"
    longest = base + "a" * (URL_MAX - len(base))
    assert parse(longest, allow_http=False).host == "hooks.example.com"
    with pytest.raises(Refused):
        parse(longest + "a", allow_http=False)


def test_http_only_when_allowed() -> None:
    assert parse("http://hooks.example.com/", allow_http=True).scheme == "http"
