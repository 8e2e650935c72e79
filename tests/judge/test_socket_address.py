"""A judge's socket in a folder whose path is longer than a Unix socket address may be (Linux: 107 bytes), as a
deep $KERNEL_GYM_JUDGE_DIR or a test's temporary folder gives: bound and reached through the folder's descriptor."""

from __future__ import annotations

import socket

from kernel_gym.paths import UNIX_PATH_MAX, unix_address


def test_a_socket_in_a_deep_folder_is_bound_and_reached(tmp_path):
    folder = tmp_path.joinpath(*["a_rather_long_folder_name"] * 6)
    folder.mkdir(parents=True)
    path = folder / "judge-cpu-host-0123abcd.sock"
    assert len(str(path)) > UNIX_PATH_MAX
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(path) as address:
            server.bind(address)
        server.listen(1)
        assert path.exists()  # the socket file is where it was asked for
        with unix_address(path) as address:
            client.connect(address)
        conn, _ = server.accept()
        client.sendall(b"ping")
        assert conn.recv(4) == b"ping"
        conn.close()
    finally:
        client.close()
        server.close()


def test_a_short_path_is_used_as_it_is(tmp_path):
    with unix_address(tmp_path / "j.sock") as address:
        assert address == str(tmp_path / "j.sock")
