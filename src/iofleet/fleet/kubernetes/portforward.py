"""The apiserver's port-forward to a pod's fio server, for a controller
that cannot reach pod IPs: a listener on 127.0.0.1 per pod; each
connection to it is one port-forward stream (the Python client's
websocket), bytes pumped both ways until either side closes."""

import select
import socket
import threading

from .cluster import FIO_PORT, Cluster

CHUNK = 1 << 16


class PortForward:
    """127.0.0.1:`port` → the pod's fio port, until `close()`."""

    def __init__(self, cluster: Cluster, namespace: str, pod: str):
        self.cluster, self.namespace, self.pod = cluster, namespace, pod
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._streams: list = []
        threading.Thread(target=self._accept, name=f"port-forward {pod}", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._pump, args=(conn,), name=f"port-forward {self.pod} stream",
                             daemon=True).start()

    def _pump(self, conn: socket.socket) -> None:
        from kubernetes.stream import portforward
        try:
            stream = portforward(self.cluster.own_core().connect_get_namespaced_pod_portforward, self.pod,
                                 self.namespace, ports=str(FIO_PORT))
            remote = stream.socket(FIO_PORT)
        except Exception:  # the pod is gone or the apiserver refused: the client sees a closed connection
            conn.close()
            return
        self._streams.append(stream)
        remote.setblocking(True)
        try:
            ends = [conn, remote]
            while not self._closed.is_set():
                readable, _, _ = select.select(ends, [], [], 0.5)
                for end in readable:
                    data = end.recv(CHUNK)
                    if not data:
                        return
                    (remote if end is conn else conn).sendall(data)
        except OSError:
            return
        finally:
            conn.close()
            remote.close()
            stream.close()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for stream in self._streams:
            try:
                stream.close()
            except Exception:  # already closed by its pump
                pass
