import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * DynamoDB Local on 127.0.0.1 only: its command line has no listen address (it binds every interface),
 * so this launcher builds the server from the same arguments and binds its connector to loopback before
 * starting it. Run as a single-file source program (java -cp <DynamoDB Local jars> LoopbackDynamoDb.java).
 */
public class LoopbackDynamoDb {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) {
      ((ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
    proxy.join();
  }
}
