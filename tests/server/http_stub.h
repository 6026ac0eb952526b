// A loopback HTTP/1.1 server for URL-reference tests: one request per connection, answered by a
// handler that writes to the socket.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <istream>
#include <string>
#include <thread>
#include <utility>

namespace axqc::test {

class HttpStub {
 public:
  // Writes the answer for `target` to the socket; returns when done.
  using Handler = std::function<void(boost::asio::ip::tcp::socket&, const std::string& target,
                                     const std::atomic<bool>& stop)>;
  explicit HttpStub(Handler handler)
      : handler_(std::move(handler)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~HttpStub() {
    stop_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket s(io_);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }
  unsigned short port() const { return port_; }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::atomic<int> requests{0};

 private:
  void Serve() {
    while (!stop_) {
      boost::asio::ip::tcp::socket sock(io_);
      boost::system::error_code ec;
      acceptor_.accept(sock, ec);
      if (ec || stop_) continue;
      boost::asio::streambuf buf;
      boost::asio::read_until(sock, buf, "\r\n\r\n", ec);
      if (ec) continue;
      std::istream in(&buf);
      std::string method, target;
      in >> method >> target;
      ++requests;
      handler_(sock, target, stop_);
      sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }
  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace axqc::test
